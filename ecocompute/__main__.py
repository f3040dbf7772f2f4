from ecocompute.cli import main

raise SystemExit(main())
