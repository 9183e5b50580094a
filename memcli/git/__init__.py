"""git, and only here: the one package of memcli that starts a ``git`` process.

``run``      the sealed runner: environment, locale, ``core.quotePath``, deadline, errors
             mapped to memcli's (``GitFailed``, exit 10); light enough for the hot path
``log``      memcli's commit records: ``Memcli-*`` trailers, messages, ``git log`` entries (pure)
``commit``   crash-safe, path-limited commits (only the trees on the paths rebuilt); recovery after a kill
``repo``     :class:`GitRepo`: the repository holding a workspace (paths, revisions, log, commit)
``history``  :class:`History`: old versions, changed files, commits per path
``rewrite``  ``purge --history``: git-filter-repo in a child process, then reflog expiry and gc
``identity`` the actor git knows (``user.email``), cached on the config files' stat

Nothing is imported here: ``memcli --help`` and the hot path load only the modules they use.
"""
