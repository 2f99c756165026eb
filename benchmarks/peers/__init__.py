"""One module per peer, each with the same workload functions.

Every function takes ``(connect, params)`` (a connect string and the JSON parameters the parent
chose: paths, durations, sizes) and returns ``{"metrics": {...}, "samples": {...}}`` where the
samples are latency lists in milliseconds. It raises :class:`benchmarks.common.Unavailable`
when the peer lacks what the workload needs. The functions run in a worker subprocess, one
run per process.
"""

#: The workload function of each (workload, case): ``"W0/cycle"`` -> ``w0_cycle``.
FUNCTIONS: dict[str, str] = {
    "W0/cycle": "w0_cycle",
    "W0/pipelined": "w0_pipelined",
    "W1/lock": "w1",
    "W2/handoff": "w2",
    "W3/waiters": "w3",
    "W4/cache": "w4",
    "W5/failover": "w5",
    "W6/tree": "w6",
    "W7/sessions": "w7",
    "W8/locks": "w8",
    "W9/services": "w9",
}
