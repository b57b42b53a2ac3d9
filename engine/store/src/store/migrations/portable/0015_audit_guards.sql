-- The write audit names the guard rules that acted on each write (docs/guards.md), as a
-- JSON array of rule ids; never a value. NULL when none did.
ALTER TABLE audit ADD COLUMN guards TEXT;
