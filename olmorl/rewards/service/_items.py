"""Bodies read item by item: `{"items": [...]}` whose envelope is checked here and whose items are validated one
by one by the route, so one bad item is that item's error and never fails the batch (/v1/verify and the session
batch routes). FastAPI does not see such a body's model, so its schema is published to /openapi.json here."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel


async def read_items(request: Request, max_items: int) -> list[Any]:
    """The `items` list of a body BodyLimits already bounded; 422 for a malformed envelope, 413 past `max_items`."""
    try:
        body = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPException(422, [{"loc": ["body"], "msg": f"body is not valid JSON: {exc}",
                                   "type": "json_invalid"}]) from None
    if not isinstance(body, dict) or "items" not in body:
        raise HTTPException(422, [{"loc": ["body", "items"], "msg": "field required: a JSON object with "
                                   "an `items` list", "type": "missing"}])
    items = body["items"]
    if not isinstance(items, list):
        raise HTTPException(422, [{"loc": ["body", "items"], "msg": "`items` must be a list",
                                   "type": "list_type"}])
    if len(items) > max_items:
        raise HTTPException(413, f"batch of {len(items)} items exceeds max_items_per_request={max_items}")
    return items


def item_body(model: type[BaseModel]) -> dict[str, Any]:
    """A route's `openapi_extra`: its body is `model` (published by `publish_item_bodies`)."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}}


def publish_item_bodies(app: FastAPI, models: list[type[BaseModel]]) -> None:
    """Put the item-by-item bodies' schemas into the app's OpenAPI document."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in models:
                request_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(request_schema.pop("$defs", {}))
                components[model.__name__] = request_schema
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
