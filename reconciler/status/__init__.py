"""One status document per app: built from its objects' health (``document``), written to
the host after a pass (``publish``), kept following the member clusters between passes
(``follow``), or computed on demand from them (``live``)."""
