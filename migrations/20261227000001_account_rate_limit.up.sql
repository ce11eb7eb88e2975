-- Account-level rate limits (issue 21 item 1, docs/design.md §12): an account's
-- optional budget in requests per minute, shared by every token of the
-- account and of its subaccounts. NULL: no account budget (each token keeps
-- its own).
ALTER TABLE accounts ADD COLUMN rate_limit integer
    CONSTRAINT accounts_rate_limit_positive CHECK (rate_limit IS NULL OR rate_limit >= 1);
