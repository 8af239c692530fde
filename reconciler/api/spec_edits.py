"""``POST .../stop``, ``.../scale`` (``{"replicas": N}``) and ``.../image``
(``{"container": C, "image": I}``): desired state changes only through git, so each is
answered 409 with the spec edit to commit (verb: ``get`` on the app's kind).

The caller is authorized before the body is read: a caller without rights learns
nothing from how a body is judged. A body is then read as strict JSON (``NaN``,
``Infinity`` and numbers past a float's range are no JSON numbers) and a bad one is a
422 naming the field, never a 500.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError

from pincompile.manifest import ANNOTATION_SOURCE
from reconciler.api.access import Caller
from reconciler.api.actions import APP_PATH, ActionGateway, Authorize, app_resource
from reconciler.api.models import Problem, SpecEdit
from reconciler.model import AppKey

Body = TypeVar("Body", bound=BaseModel)


class Scale(BaseModel):
    replicas: int = Field(ge=0, le=100_000)


class Image(BaseModel):
    container: str = Field(min_length=1, max_length=253)
    image: str = Field(min_length=1, max_length=1000)


def spec_edit(gateway: ActionGateway, app: AppKey, field: str, value: Any,
              command: str) -> SpecEdit:
    """The 409 answer to a change of desired state: the edit to commit instead."""
    source = "the app's spec file"
    if gateway.host is not None:
        annotations = (app_resource(gateway.host, app).get("metadata") or {}).get(
            "annotations") or {}
        source = str(annotations.get(ANNOTATION_SOURCE) or source)
    name = "/".join(app)
    return SpecEdit(detail=f"desired state changes only through git: set {field} of "
                           f"{name} to {value} in {source} and commit it (`{command}` "
                           "makes the edit); the reconciler applies the commit",
                    file=source, field=field, value=value, command=command)


def _not_a_number(text: str) -> float:
    raise ValueError(f"{text} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is past the range of a number")
    return number


async def read_body(request: Request, model: type[Body]) -> Body:
    """The request's JSON body as ``model``; HTTPException 422 naming what is wrong."""
    raw = await request.body()
    try:
        return model.model_validate(json.loads(raw or b"null", parse_constant=_not_a_number,
                                               parse_float=_finite))
    except ValidationError as exc:
        raise HTTPException(422, [{"loc": ["body", *e["loc"]], "msg": e["msg"],
                                   "type": e["type"]} for e in exc.errors()]) from None
    except ValueError as exc:  # not JSON, or NaN / Infinity / 1e309
        raise HTTPException(422, [{"loc": ["body"], "msg": str(exc)[:200],
                                   "type": "json_invalid"}]) from None


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI request body of a route that reads ``model`` itself (:func:`read_body`)."""
    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": model.model_json_schema()}}}}


def mount_spec_answers(api: FastAPI, caller: Callable[..., Awaitable[Caller]],
                       authorize: Authorize) -> None:
    """Add stop, scale and image to the API's app (``caller`` authenticates and
    rate-limits, ``authorize`` authorizes, as for the actions)."""
    router = APIRouter(dependencies=[Depends(caller)],
                       responses={404: {"model": Problem}, 422: {"model": Problem}})
    answers: dict[int | str, dict[str, Any]] = {
        409: {"model": SpecEdit, "description": "the spec edit to commit"}}

    async def answer(request: Request, app: AppKey, model: type[BaseModel] | None,
                     edit: Callable[[Any], tuple[str, Any, str]]) -> JSONResponse:
        """Authorize ``get``, then read the body as ``model``; ``edit(body)`` says the
        field, its value and the ``pincompile set`` command."""
        await authorize(request, request.state.caller, "read", app[0], app[1])
        field, value, command = edit(await read_body(request, model) if model else None)
        answered = await run_in_threadpool(spec_edit, request.app.state.gateway, app, field,
                                           value, command)
        return JSONResponse(answered.model_dump(mode="json"), status_code=409)

    @router.post(f"{APP_PATH}/stop", responses=answers, response_model=None,
                 summary="Stop the app: answered with the spec edit to commit")
    async def stop(request: Request, kind: str, project: str, name: str) -> JSONResponse:
        return await answer(request, (kind, project, name), None, lambda _: (
            "spec.replicas", 0, f"pincompile set replicas {kind}/{project}/{name} 0"))

    @router.post(f"{APP_PATH}/scale", responses=answers, response_model=None,
                 openapi_extra=_body_schema(Scale),
                 summary="Scale the app: answered with the spec edit to commit")
    async def scale(request: Request, kind: str, project: str, name: str) -> JSONResponse:
        return await answer(request, (kind, project, name), Scale, lambda body: (
            "spec.replicas", body.replicas,
            f"pincompile set replicas {kind}/{project}/{name} {body.replicas}"))

    @router.post(f"{APP_PATH}/image", responses=answers, response_model=None,
                 openapi_extra=_body_schema(Image),
                 summary="Change a container's image: answered with the spec edit to commit")
    async def image(request: Request, kind: str, project: str, name: str) -> JSONResponse:
        return await answer(request, (kind, project, name), Image, lambda body: (
            f"spec.template.containers[{body.container}].image", body.image,
            f"pincompile set image {kind}/{project}/{name} {body.container}={body.image}"))

    api.include_router(router)
