"""``python -m ctxwin``: the command line."""

from ctxwin._cli import main

raise SystemExit(main())
