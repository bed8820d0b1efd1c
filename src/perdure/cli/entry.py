"""The ``perdure`` script and ``python -m perdure``: a worker holds SIGTERM from the first moment
(:func:`perdure.cli.stops.early`), then the command line is imported and run."""

from __future__ import annotations

import sys

from perdure.cli.stops import early


def run() -> None:
    """Run the command line (:func:`perdure.cli.main.run`) on ``sys.argv``."""
    early(sys.argv[1:])
    from perdure.cli.main import run as main

    main()
