"""Node remediation: signals on a member cluster's nodes turned into cordon, drain and
terminate, behind rate limits and a circuit breaker (docs/operations.md)."""
