from tritonops.cli.main import main

raise SystemExit(main())
