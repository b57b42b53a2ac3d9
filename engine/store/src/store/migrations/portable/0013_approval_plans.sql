-- An approval of a tool that runs others binds the plan of writes the approver was
-- shown, as the sha256 of its writes in order (docs/decisions/017-one-gate.md): a
-- plan that changed since is refused, and nothing is sent. NULL for a tool that sends
-- only its own request.
ALTER TABLE approvals ADD COLUMN plan_sha256 TEXT;
