from fabric_exporter.cli import main

raise SystemExit(main())
