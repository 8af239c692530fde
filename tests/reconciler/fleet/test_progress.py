"""How a first build shows its progress: read from the Go build log, one updating line on
a terminal, plain lines in logs."""

from __future__ import annotations

from pathlib import Path


def test_build_progress_is_read_from_the_go_build_log(tmp_path: Path) -> None:
    from reconciler.fleet.progress import TOTAL_PREFIX, format_elapsed, read_build_log

    log = tmp_path / "build.log"
    log.write_text(f"/usr/local/go/bin/go build -v -o out/ k8s.io/kubernetes/cmd/x\n"
                   f"{TOTAL_PREFIX}4\n"
                   "internal/goarch\nk8s.io/apimachinery/pkg/util/sets\n"
                   "go: downloading k8s.io/api v0.36.3\n")
    progress = read_build_log(log, 192.4)
    assert (progress.compiled, progress.total) == (2, 4)
    assert progress.line() == ("building the fleet binaries: 2/4 packages, 3m12s elapsed "
                               "(compiling k8s.io/apimachinery/pkg/util/sets)")
    log.write_text(log.read_text() + "a/b\nc/d\n")
    assert "(linking)" in read_build_log(log, 200).line()
    waiting = read_build_log(tmp_path / "missing.log", 61, waiting=True).line()
    assert waiting == ("waiting for another process building the fleet binaries: "
                       "1m01s elapsed")
    assert format_elapsed(9.9) == "9s"


def test_status_line_rewrites_on_a_terminal_and_prints_lines_in_logs() -> None:
    import io

    from reconciler.fleet.progress import StatusLine

    term = io.StringIO()
    line = StatusLine(term, tty=True)
    line.status("a")
    line.status("b")
    line.echo("done")
    assert term.getvalue() == "\r\033[Ka\r\033[Kb\r\033[Kdone\n" and line.every == 1.0
    log = io.StringIO()
    plain = StatusLine(log, tty=False, plain_every=30)
    plain.status("a")
    plain.echo("done")
    plain.close()
    assert log.getvalue() == "a\ndone\n" and plain.every == 30
