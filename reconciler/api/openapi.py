"""Print the API's OpenAPI document (``python -m reconciler.api.openapi``); the copy in
docs/api/openapi.json is checked against it by the tests."""

from __future__ import annotations

import json
import sys
from typing import Any


def document() -> dict[str, Any]:
    from reconciler.api.app import create_app

    return create_app(None).openapi()


def main() -> None:
    sys.stdout.write(json.dumps(document(), indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
