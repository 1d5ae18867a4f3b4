"""The reward server: FastAPI app around one RewardEngine.

Routes: POST /v1/verify, GET /v1/verifiers, the session API (/v1/sessions, /v1/envs) and its
NeMo Gym face (/seed_session, /{tool}, /verify), /healthz, /readyz, /metrics, /docs, /redoc, /openapi.json,
plus routes registered by verifier modules (`register_routes`). CPU work never runs on the event loop, so
/healthz stays fast while a batch of pathological items is being scored.
"""

from __future__ import annotations

import gc
import importlib.resources
import json
import logging
import secrets
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from fastapi.responses import HTMLResponse, JSONResponse, Response

from olmorl import __version__
from olmorl.rewards.service._body_limits import BodyLimits
from olmorl.rewards.engine._engine import RewardEngine
from olmorl.rewards.service._gym_routes import build_gym_routes
from olmorl.rewards.service._items import item_body, publish_item_bodies, read_items
from olmorl.rewards.service._openrlhf_routes import openrlhf_routes
from olmorl.rewards.service._request_counter import RequestCounter
from olmorl.rewards._models import VerifierInfo, VerifyRequest, VerifyResponse
from olmorl.rewards.engine._registry import route_builders
from olmorl.rewards.service._session_routes import BATCH_BODIES, build_session_routes
from olmorl.rewards.sessions._sessions import SessionManager
from olmorl.rewards._settings import Settings

log = logging.getLogger("olmorl.rewards")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    engine = RewardEngine(settings)
    sessions = SessionManager(engine)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        log.info("olmorl-rewards %s settings: %s", __version__, json.dumps(settings.summary(), default=str))
        await engine.start()
        await sessions.start()
        # What start-up built (verifier tables, FastAPI, pydantic schemas) lives as long as the server: out of the
        # collector's sight, a full collection walks only what requests allocate.
        gc.freeze()
        try:
            yield
        finally:
            await sessions.stop()
            await engine.stop()

    app = FastAPI(
        title="olmorl reward server",
        version=__version__,
        description="Batch verification of model completions: math, code, instruction following, LM judge.",
        lifespan=lifespan,
        docs_url=None, redoc_url=None, openapi_url=None,  # served below, from the package: no CDN, own metrics
    )
    app.state.engine = engine
    app.state.sessions = sessions
    app.state.settings = settings
    metrics = engine.metrics
    # inside the request counter, so a refused body is counted too
    app.add_middleware(BodyLimits, max_body_bytes=settings.max_body_bytes, max_json_depth=settings.max_json_depth)
    app.add_middleware(RequestCounter, requests=metrics.requests, static_prefix=DOCS_STATIC)

    async def require_api_key(request: Request) -> None:
        if settings.api_key is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(token.encode(), settings.api_key.encode()):
            raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})

    @app.post(
        "/v1/verify",
        response_model=VerifyResponse,
        tags=["verify"],
        dependencies=[Depends(require_api_key)],
        summary="Score a batch of completions",
        responses={413: {"description": "Batch or body over the configured limits"},
                   422: {"description": "Malformed body (names the field)"}},
        openapi_extra=item_body(VerifyRequest),
    )
    async def verify(request: Request) -> Response:
        """Every item gets one result, in order. A bad item is `invalid`; it never fails the batch."""
        items = await read_items(request, settings.max_items_per_request)
        # serialized once, by the engine: FastAPI would validate the results again and encode them in two passes
        _, encoded = await engine.verify_batch_encoded(items)
        return Response(b'{"results":' + encoded + b"}", media_type="application/json")

    @app.get("/v1/verifiers", response_model=list[VerifierInfo], tags=["verify"],
             dependencies=[Depends(require_api_key)])
    async def verifiers() -> list[VerifierInfo]:
        """Every registered verifier: name, aliases, ground-truth shape and options."""
        return engine.describe()

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    async def readyz() -> JSONResponse:
        """Readiness: workers warm; verifier backends (judge, sandbox) report their own state; sessions report
        how many are open and their idle memory against its budget."""
        state = {**engine.readiness(), "sessions": sessions.readiness()}
        return JSONResponse(state, status_code=200 if state["ready"] else 503)

    @app.get("/metrics", tags=["ops"])
    async def prometheus_metrics() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    app.include_router(build_session_routes(sessions), dependencies=[Depends(require_api_key)])
    app.include_router(openrlhf_routes(engine), dependencies=[Depends(require_api_key)])
    for build in route_builders():
        app.include_router(build(engine), dependencies=[Depends(require_api_key)])
    # Last: its `POST /{tool}` route must not shadow the single-segment routes above.
    app.include_router(build_gym_routes(sessions), dependencies=[Depends(require_api_key)])

    publish_item_bodies(app, [VerifyRequest, *BATCH_BODIES])
    _serve_docs(app)
    return app


DOCS_STATIC = "/docs/static"


def _serve_docs(app: FastAPI) -> None:
    """/openapi.json, /docs (Swagger UI) and /redoc with their JavaScript and CSS served from the installed
    `fastapi-offline` package (FastAPI's self-hosting recipe), so the docs work without internet access."""
    static = importlib.resources.files("fastapi_offline") / "static"
    app.mount(DOCS_STATIC, StaticFiles(directory=str(static)), name="docs-static")

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_json() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=f"{app.title} - Swagger UI",
                                   swagger_js_url=f"{DOCS_STATIC}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{DOCS_STATIC}/swagger-ui.css",
                                   swagger_favicon_url=f"{DOCS_STATIC}/favicon.png")

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url="/openapi.json", title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{DOCS_STATIC}/redoc.standalone.js",
                              redoc_favicon_url=f"{DOCS_STATIC}/favicon.png", with_google_fonts=False)
