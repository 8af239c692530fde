"""The golden tests share their helpers with tests/expand (expand_support.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "expand"))
