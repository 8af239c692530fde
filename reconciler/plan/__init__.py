"""Planning a member cluster and carrying the plan out: what each desired object needs
(``cluster_plan``: server-side dry-runs, skipped where ``memo`` and ``applied`` prove an
object unchanged; ``diff`` and ``conflict`` read the answers), and ``execute``, the writes
in dependency order. ``narrow`` keeps a plan to the apps a command names."""
