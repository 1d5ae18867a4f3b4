"""Stateful multi-turn sessions and the Environment API.

An `Environment` (`_environment`) declares tools and a verify step; `_sessions` keeps live sessions (open,
tool calls, verify, close, idle TTL, limits), `_session_memory` the memory budget of idle sessions, and
`_session_models` the wire types of the session routes, `_warm_pool` the generic warm pool (`WarmPool`) and
`_interpreters` the sessions' sandboxed interpreters served from it. The concrete environments live in
`olmorl.rewards.environments`; the HTTP routes in `olmorl.rewards.service`.
"""

from olmorl.rewards.sessions._warm_pool import PoolStats, WarmPool

__all__ = ["PoolStats", "WarmPool"]
