"""The web console ``serve`` serves at ``/``: the member clusters and the fleet's apps as a
grid, one app's placement, rollout, pods, live logs, scaling, events and history, in
server-rendered pages on the API's own access control (docs/console.md)."""
