"""The reward service: everything that faces a client.

The FastAPI app (`_server`) and its routes: `/v1/verify` and the code routes' registration, sessions
(`_session_routes`), NeMo Gym (`_gym_routes`) and OpenRLHF (`_openrlhf_routes`) compatibility, one ASGI body
limit for all of them (`_body_limits`); the `olmorl-rewards` CLI (`_cli`) and dataset evaluation
(`_evaluate`); the ways to run the service without `serve`: a local child server (`_local`),
Ray Serve (`_ray_serve`) and the in-process API (`_inprocess`, i.e. `olmorl.verify`). It calls into the
engine (`olmorl.rewards.engine`) and sessions (`olmorl.rewards.sessions`); nothing below imports it.
"""
