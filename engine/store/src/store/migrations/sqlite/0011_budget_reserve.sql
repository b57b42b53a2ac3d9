-- PostgreSQL reserves a budget in one round trip through the function its 0011
-- creates. SQLite has one writer and reserves in a `BEGIN IMMEDIATE` transaction
-- instead (engine/store/src/store/budgets.rs), so there is nothing to create here; the
-- version is kept so both backends know the same list.
SELECT 1;
