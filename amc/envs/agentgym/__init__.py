"""AgentGym's HTTP protocol: a client environment, a server for any suite, its process.

- :mod:`.client` -- an :class:`~amc.protocols.Environment` over an AgentGym server (``/fork``
  when the server has it, else verified replay).
- :mod:`.server` -- ``amc serve-env``: any registered suite behind the protocol (+ ``/fork``).
- :mod:`.process` -- start and stop a ``serve-env`` child process on a free loopback port.
"""
