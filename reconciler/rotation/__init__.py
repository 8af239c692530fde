"""Node rotation: every node of a member cluster replaced, batch by batch, while its apps
keep their disruption budgets (docs/operations.md)."""
