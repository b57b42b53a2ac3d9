-- With `[policy]`, the write audit names the policies that decided each write: the
-- permits that allowed it or the forbids that refused it, as a JSON array of ids
-- (docs/policy.md). NULL for records written without policies.
ALTER TABLE audit ADD COLUMN policies TEXT;
