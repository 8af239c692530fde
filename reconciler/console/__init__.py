"""The web console ``serve`` serves at ``/``: the fleet's apps as a grid, one app's
placement, rollout, events and history, in server-rendered pages on the API's own access
control (docs/console.md)."""
