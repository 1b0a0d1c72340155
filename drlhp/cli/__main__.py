"""``python -m drlhp.cli``: the ``drlhp`` command."""
import sys

from drlhp.cli.main import main

sys.exit(main())
