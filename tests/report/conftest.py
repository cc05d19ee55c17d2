"""The report tests' environment: matplotlib keeps its font cache in the temp dir.

matplotlib writes its font list to ``$MPLCONFIGDIR`` (else ``~/.cache/matplotlib``) the first time
it is imported; tests write only in their own directories and the temp dir. Set at import, before
any test imports matplotlib, and inherited by the ``fabric-exporter report`` subprocesses.
"""

import os
import tempfile

os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp(prefix="fabric-tests-matplotlib-"))
