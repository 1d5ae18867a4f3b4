"""The scoring engine: turns a batch of items into one result per item.

The registry of verifiers and environments (`_registry`: `register`, `Verifier`, `Score`, `InvalidInput`),
the engine that validates each item, routes it to its verifier and applies timeouts and the error policy
(`_engine`), and the pool of worker processes that runs CPU-bound verifiers away from the event loop
(`_pool`, `_workers`); composite items, whose components it scores through the same routing (`_composite`); and the rule that children die with the process that started them (`_lifetime`). Verifier folders (`math/`, `code/`, ...) import the registry from here; the service
and sessions sit above it.
"""
