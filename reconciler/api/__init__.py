"""The PinCompute API: workload reads, insight (events, history) and, later, debugging
and actions, behind one authenticated, authorized, rate-limited and audited gateway.

Git stays the only write path for desired state; the API serves reads and operations.
"""
