"""nbgrader's release with an exchange root that only the instructor can write.

nbgrader's own ``release_assignment`` creates its exchange root (``/srv/nbgrader/exchange`` unless
configured) with mode 0777, and resets an existing root to 0777, so that any account on the machine
may create a course there. A course needs less: the root is the instructor's, each course's
``outbound`` is read by the students, and only its ``inbound`` (nbgrader's own 0733 plus setgid) is
written by them. :class:`ReleaseAssignment` creates a missing root 0755 (0775 for a group-shared
course) and leaves an existing root's mode as it is, warning when others may write to it.
"""
from __future__ import annotations

import os
import stat

from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment


class ReleaseAssignment(ExchangeReleaseAssignment):
    """nbgrader's default release, its exchange root created 0755 (see the module's docstring)."""

    def ensure_root(self) -> None:
        if os.path.exists(self.root):
            if os.stat(self.root).st_mode & stat.S_IWOTH:
                self.log.warning("The exchange directory %s is writable by every account on this machine; "
                                 "chmod o-w it unless other instructors create courses there.", self.root)
            return
        self.log.warning("Creating exchange directory: %s", self.root)
        os.makedirs(self.root)
        os.chmod(self.root, 0o775 | stat.S_ISGID if self.coursedir.groupshared else 0o755)
