"""``pincompile serve``: reconcile after every git push, as a long-running process."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pincompile.commands.common import EXIT_CLUSTER, EXIT_INVALID, EXIT_USAGE, fail
from pincompile.source.gitsource import GitError
from reconciler.clients.connect import KubeconfigError
from reconciler.commands.common import failover_options
from reconciler.commands.options import DURATION
from reconciler.serve.guard import parse_networks
from reconciler.serve.redact import RedactingFormatter, redact
from reconciler.store import StoreError

if TYPE_CHECKING:
    from reconciler.serve.app import ServeApp
    from reconciler.serve.leader import LeaseTiming

SECRET_ENV = "PINCOMPILE_WEBHOOK_SECRET"
STATUS_TOKEN_ENV = "PINCOMPILE_STATUS_TOKEN"


def read_secret(secret_file: Path | None, option: str = "--webhook-secret-file",
                env_name: str = SECRET_ENV) -> bytes | None:
    """A secret from the file (trailing newline dropped) or the environment variable."""
    if secret_file is not None:
        try:
            secret = secret_file.read_bytes().rstrip(b"\r\n")
        except OSError as exc:
            fail(f"cannot read {option} {secret_file}: {exc.strerror}")
        if not secret:
            fail(f"{option} {secret_file} is empty")
        return secret
    env = os.environ.get(env_name, "")
    return env.encode() or None


SERVE_HELP = """Reconcile the member clusters after every git push, and periodically.

Keeps a mirror of BRANCH of the repository; on a signed push webhook (or every
--resync) it fetches the branch head, compiles it and reconciles the member clusters.
A burst of pushes becomes one pass for the newest commit; an older commit is never
applied after a newer one. A commit that fails to compile applies nothing.

\b
Webhook endpoints (POST; secret from --webhook-secret-file or $PINCOMPILE_WEBHOOK_SECRET):
  /webhooks/github    X-Hub-Signature-256: sha256=HMAC
  /webhooks/gitlab    X-Gitlab-Token: SECRET
  /webhooks/gitea     X-Gitea-Signature: HMAC
  /webhooks/generic   X-Pincompile-Signature-256: sha256=HMAC of
                      {"ref": "refs/heads/main", "after": "SHA"}
                      (contrib/post-receive sends it from a bare git server)
A delivery received again within --replay-window is refused (409), and so is a push
whose payload names another repository than --repo (403).
Also: GET /healthz, /readyz (open, for probes), /metrics (Prometheus), /status (JSON:
"apps" is what `pincompile status -o json` prints, "serve" this replica's state and last
pass). /metrics and /status are closed by default: they answer a bearer token the host
cluster accepts whose user may `get` the path (a ClusterRole rule with nonResourceURLs:
["/metrics", "/status"]), or the token of --status-token-file; --open-status opens them
to anyone who reaches --listen.

\b
High availability: run two or more replicas; a coordination.k8s.io Lease in the host
cluster (--namespace) lets exactly one reconcile; a standby takes over within
--lease-duration after the leader dies. --shards N splits member clusters over N
Leases so N replicas share the work.

\b
Examples:
  # follow main of a local bare repository, webhooks on :8080
  PINCOMPILE_WEBHOOK_SECRET=s3cret pincompile serve --repo /srv/git/platform.git
  # a GitHub repository, specs in deploy/, audit trail to a file, two shards
  pincompile serve --repo https://github.com/acme/platform --path deploy \\
      --webhook-secret-file /etc/pincompile/secret --audit-log /var/log/pincompile.jsonl \\
      --shards 2 --listen :8080
  # what is it doing? (the status token, or a token the host lets `get` /status)
  curl -s -H "Authorization: Bearer $TOKEN" localhost:8080/status | jq .serve.lastPass

A pass running longer than --pass-deadline turns /readyz not ready (the reason is in
/status) until it ends; pushes that arrive meanwhile are queued.

A pass running longer than --stuck-after (a call that never returns) is given up: serve
releases its Lease, so that a standby takes over at once, and exits 3; on Kubernetes the
container restarts.

Exit codes: 0 stopped by SIGTERM/SIGINT, 1 the pass in flight did not finish within
--shutdown-timeout, 2 usage error (also: the kubeconfig is missing, malformed or has no
--host-context), 3 a pass ran past --stuck-after. A host cluster that does not answer is no
exit: serve stays up, not ready, and keeps trying.
"""


@click.command("serve", help=SERVE_HELP)
@click.option("--repo", required=True, metavar="URL-or-PATH",
              help="Repository to follow: any URL or path `git fetch` understands.")
@click.option("--branch", default="main", show_default=True,
              help="Branch to follow; pushes to other branches are ignored.")
@click.option("--path", "spec_path", default="", metavar="DIR",
              help="Folder of the specs inside the repository (default: its root).")
@click.option("--listen", default="127.0.0.1:8080", show_default=True, metavar="HOST:PORT",
              help="Address of the HTTP server (webhooks, /metrics, /status); :8080 binds "
                   "every interface.")
@click.option("--resync", type=DURATION, default="3m", show_default=True,
              help="Reconcile this long after the last pass even without a push (corrects "
                   "drift).")
@click.option("--coalesce", type=DURATION, default="1s", show_default=True,
              help="Wait until pushes have been quiet this long, then apply only the newest.")
@click.option("--webhook-secret-file", type=click.Path(dir_okay=False, path_type=Path),
              help=f"File holding the webhook secret (else ${SECRET_ENV}). Without a secret "
                   "every webhook is refused with 401.")
@click.option("--status-token-file", type=click.Path(dir_okay=False, path_type=Path),
              help=f"File holding a bearer token (else ${STATUS_TOKEN_ENV}) that may read "
                   "/status and /metrics, beside tokens the host cluster authorizes for them "
                   "(e.g. a Prometheus without a service account token). /healthz and "
                   "/readyz stay open.")
@click.option("--open-status", is_flag=True,
              help="Serve /status and /metrics to anyone who reaches --listen, without a "
                   "token (they list every project's apps, placement and errors).")
@click.option("--replay-window", type=DURATION, default="1h", show_default=True,
              help="A webhook delivery (same delivery id, or same body) received again "
                   "within this long is refused with 409.")
@click.option("--read-timeout", type=DURATION, default="10s", show_default=True,
              help="Drop an HTTP connection that has not sent a whole request head this long "
                   "after it opened (or after its last answer), or that sends no byte of a "
                   "body for this long (slow or idle clients never hold a worker).")
@click.option("--max-connections", type=click.IntRange(10), default=4000, show_default=True,
              help="Open HTTP connections at most; past them requests get 503.")
@click.option("--max-client-connections", type=click.IntRange(0), default=200,
              show_default=True,
              help="Open HTTP connections per client address (0: no bound); more are "
                   "answered 429 and closed. --trusted-proxies are not bounded so.")
@click.option("--trusted-proxies", default="", metavar="ADDRESSES",
              help="Comma-separated addresses or networks (10.0.0.0/8) of the proxies in "
                   "front of serve: only their X-Forwarded-For (the client's address, which "
                   "the login throttle and review limits count) and X-Forwarded-Proto are "
                   "believed. Default: none.")
@click.option("--webhook-max-bytes", type=click.IntRange(1024), default=2 * 1024 * 1024,
              show_default=True, help="Larger webhook bodies are refused with 413.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), envvar="KUBECONFIG",
              help="Kubeconfig with the host and member contexts (in a pod: the service "
                   "account when omitted).")
@click.option("--host-context", default="host", show_default=True,
              help="Kubeconfig context of the host cluster (Leases and Events live there).")
@click.option("--namespace", envvar="POD_NAMESPACE", default="default", show_default=True,
              help="Host-cluster namespace of the Leases and Events (env POD_NAMESPACE).")
@click.option("--identity", envvar="POD_NAME", default=None,
              help="This replica's name in the Lease (env POD_NAME; default host-pid).")
@click.option("--leader-election/--no-leader-election", default=True, show_default=True,
              help="Reconcile only while holding the Lease, so replicas never both apply.")
@click.option("--shards", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Split member clusters over N Leases (rendezvous hashing); each replica "
                   "reconciles the clusters of the shards it leads.")
@click.option("--lease-duration", type=DURATION, default="15s", show_default=True,
              help="A standby takes over this long after the leader stopped renewing.")
@click.option("--renew-deadline", type=DURATION, default="10s", show_default=True,
              help="The leader stops reconciling when it could not renew for this long.")
@click.option("--retry-period", type=DURATION, default="2s", show_default=True,
              help="How often candidates try to acquire, and the leader renews, the Lease.")
@click.option("--audit-log", type=click.Path(dir_okay=False, path_type=Path),
              help="Append one JSON line per pass to this file.")
@click.option("--events/--no-events", default=True, show_default=True,
              help="Record each pass as a Kubernetes Event in the host cluster.")
@click.option("--mirror-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the git mirror here across restarts (default: a temporary folder).")
@click.option("--shutdown-timeout", type=DURATION, default="30s", show_default=True,
              help="On SIGTERM, wait at most this long for the pass in flight.")
@click.option("--pass-deadline", type=DURATION, default="5m", show_default=True,
              help="A pass running longer turns /readyz not ready (the reason in /status) "
                   "until it ends; pushes meanwhile are queued.")
@click.option("--stuck-after", type=DURATION, default="1h", show_default=True,
              help="A pass running longer is given up: serve releases its Lease (a standby "
                   "takes over) and exits 3. 0: never.")
@failover_options
@click.option("--store", "store_url", envvar="PINCOMPILE_STORE", default=None, metavar="URL",
              help="The API's insight store (events, history): sqlite:///FILE or "
                   "postgresql://USER@HOST/DB (several replicas share one). "
                   "[default: sqlite:///$PINCOMPILE_CACHE/insight.db]")
@click.option("--store-retention", type=DURATION, default="720h", show_default=True,
              help="Events and history older than this are dropped from the store.")
@click.option("--api-rate", type=click.FloatRange(min=0.1), default=20.0, show_default=True,
              help="API calls a second per user (bursts of twice that), then 429.")
@click.option("--canary", is_flag=True,
              help="While leading, probe every member cluster on the schedule of "
                   "pincompile.yaml's canary policy (docs/slo.md).")
@click.option("--runner", hidden=True, default=None,
              help="module:callable returning a runner factory (for tests).")
@click.option("-v", "--verbose", is_flag=True, help="Log every request and Lease attempt.")
def serve(repo: str, branch: str, spec_path: str, listen: str, resync: float, coalesce: float,
          webhook_secret_file: Path | None, status_token_file: Path | None,
          open_status: bool, replay_window: float, read_timeout: float,
          max_connections: int, max_client_connections: int, trusted_proxies: str,
          webhook_max_bytes: int,
          kubeconfig: str | None,
          host_context: str, namespace: str, identity: str | None, leader_election: bool,
          shards: int, lease_duration: float, renew_deadline: float, retry_period: float,
          audit_log: Path | None, events: bool, mirror_dir: Path | None,
          shutdown_timeout: float, pass_deadline: float, stuck_after: float,
          failover_after: float,
          failback_step: str, store_url: str | None, store_retention: float,
          api_rate: float, canary: bool, runner: str | None, verbose: bool) -> None:
    """Reconcile after every git push, and periodically (:data:`SERVE_HELP`)."""
    from reconciler.serve.app import ServeApp, ServeOptions
    from reconciler.serve.runner import load_factory, reconciler_factory

    _log_to_stderr(verbose)
    timing = _lease_timing(lease_duration, renew_deadline, retry_period)
    if shards > 1 and not leader_election:
        fail("--shards needs leader election (drop --no-leader-election)")
    secret = read_secret(webhook_secret_file)
    status_token = read_secret(status_token_file, "--status-token-file", STATUS_TOKEN_ENV)
    try:
        proxies = parse_networks(trusted_proxies)
    except ValueError as exc:
        fail(f"--trusted-proxies: {exc}")
    if secret is None:
        click.echo(f"warning: no webhook secret (--webhook-secret-file or ${SECRET_ENV}): "
                   "every webhook is refused; only --resync triggers passes", err=True)
    try:
        runners = load_factory(runner) if runner else reconciler_factory(
            kubeconfig, host_context, failover_after=failover_after,
            failback_step=failback_step)
    except (ValueError, ImportError, AttributeError) as exc:
        fail(f"--runner {runner}: {exc}")
    options = ServeOptions(
        repo=repo, branch=branch, path=spec_path, listen=listen, resync=resync,
        coalesce=coalesce, secret=secret, max_body=webhook_max_bytes, kubeconfig=kubeconfig,
        host_context=host_context, namespace=namespace, leader_election=leader_election,
        shards=shards, timing=timing, audit_log=audit_log, events=events,
        mirror_dir=mirror_dir, shutdown_timeout=shutdown_timeout, pass_deadline=pass_deadline,
        stuck_after=stuck_after,
        app_status=runner is None, status_token=status_token, open_status=open_status,
        read_timeout=read_timeout, max_connections=max_connections,
        max_client_connections=max_client_connections, trusted_proxies=proxies,
        replay_window=replay_window, store=store_url, store_retention=store_retention,
        api_rate=api_rate, canary=canary)
    if identity:
        options.identity = identity
    try:
        app = ServeApp(options, runners)
    except (GitError, ValueError, OSError, KubeconfigError, StoreError) as exc:
        fail(redact(str(exc)))
    except Exception as exc:  # the in-cluster configuration is unusable
        fail(f"cannot reach the host cluster (context {host_context}): {redact(str(exc))}",
             EXIT_USAGE)
    _serve_until_stopped(app, branch, options.identity)


def _log_to_stderr(verbose: bool) -> None:
    """Log lines (credentials redacted) to stderr; the clients' only with --verbose."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])
    if not verbose:
        for noisy in ("kubernetes", "urllib3"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


def _lease_timing(lease_duration: float, renew_deadline: float,
                  retry_period: float) -> LeaseTiming:
    """The Lease timing options, checked (a usage error when they do not fit)."""
    from reconciler.serve.leader import LeaseTiming

    timing = LeaseTiming(lease_duration, renew_deadline, retry_period)
    try:
        timing.check()
    except ValueError as exc:
        fail(str(exc))
    return timing


def _serve_until_stopped(app: ServeApp, branch: str, identity: str) -> None:
    """Start ``app``, wait for SIGTERM/SIGINT, stop it; exit 1 when the pass in flight
    did not finish within --shutdown-timeout."""
    app.install_signal_handlers()
    app.start()
    host, port = app.address
    click.echo(f"serving {app.mirror.url} {branch} on "
               f"http://{host}:{port} as {identity}", err=True)
    app.wait()
    if app.stuck:
        click.echo(f"giving up: {app.stuck}; releasing the Lease so that a standby (or "
                   "this replica's restart) takes over", err=True)
    else:
        click.echo("shutting down: finishing the pass in flight, releasing the Lease",
                   err=True)
    finished = app.stop()
    code = EXIT_CLUSTER if app.stuck else EXIT_INVALID
    if not finished:
        # the stuck pass's threads (and any worker pool waiting at exit) must not hold the
        # process past --shutdown-timeout
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if app.stuck:
        sys.exit(code)
