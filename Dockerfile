# olmorl reward server.
#
#   docker build -t olmorl-rewards .      (where a registry is reachable; else scripts/build-image.sh)
#   docker run -p 8000:8000 -e OLMORL_API_KEY=<a secret> olmorl-rewards
#
# The server listens on 0.0.0.0 in here and runs model-written code, so it refuses to start without
# OLMORL_API_KEY (or OLMORL_ALLOW_UNAUTHENTICATED_REMOTE=1, for a port published on loopback only).
#
# The code verifier's bubblewrap sandbox needs two more run flags to create its namespaces
# inside the container (nothing else needs them):
#   --security-opt seccomp=unconfined --security-opt systempaths=unconfined
#
# BASE_IMAGE must be a Debian-based image with Python 3.11 as python3. Where no image registry
# is reachable, scripts/build-image.sh builds one offline (olmorl-base:bookworm, see
# scripts/build-base-image.sh) and passes it with --build-arg BASE_IMAGE=olmorl-base:bookworm.
ARG BASE_IMAGE=python:3.11-slim

# ---- build stage: the virtual environment ----------------------------------------------------
FROM ${BASE_IMAGE} AS build

ENV VIRTUAL_ENV=/opt/olmorl \
    PATH=/opt/olmorl/bin:$PATH \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Dependencies first, keyed on pyproject.toml, constraints.txt (and the wheelhouse) alone, so code
# changes reuse this layer. constraints.txt pins every version, as it does for the tests, so the image
# runs what CI last tested. docker/wheels/ is empty in a clean checkout: pip then installs from PyPI.
# Where the build cannot reach PyPI, scripts/build-image.sh fills it on the host and pip stays offline.
COPY pyproject.toml constraints.txt /src/
COPY docker/wheels/ /wheels/
# The run stage gets this venv as it is, so what the server never needs at run time goes here:
# package test suites (sympy's and numpy's are ~45 MB), type stubs (`.pyi`, ~1.5 MB: never imported)
# and pip itself (the run stage installs the package with the base image's pip).
RUN python3 -m venv "$VIRTUAL_ENV" \
    && python3 -c 'import tomllib; p = tomllib.load(open("/src/pyproject.toml", "rb"))["project"]; \
print("\n".join(r for r in p["dependencies"] + p["optional-dependencies"]["server"] if not r.startswith("olmorl")))' \
        >/tmp/requirements.txt \
    && if ls /wheels/*.whl >/dev/null 2>&1; then set -- --no-index --find-links /wheels; fi \
    && pip install "$@" -c /src/constraints.txt -r /tmp/requirements.txt \
    && find "$VIRTUAL_ENV" -depth -type d -name tests -path '*/site-packages/*' -exec rm -rf {} + \
    && find "$VIRTUAL_ENV" -type f -name '*.pyi' -path '*/site-packages/*' -delete \
    && pip uninstall --yes pip

# ---- wheel stage: the package itself, as a wheel (no dependency resolution, no network) ----------
# Its own stage, so a code change rebuilds only this and the last layer of the run stage.
FROM ${BASE_IMAGE} AS wheel
COPY docker/wheels/ /wheels/
COPY pyproject.toml README.md* /src/
COPY olmorl /src/olmorl
RUN if ls /wheels/*.whl >/dev/null 2>&1; then set -- --no-index --find-links /wheels; fi \
    && python3 -m pip wheel --no-cache-dir --disable-pip-version-check --no-deps "$@" --wheel-dir /dist /src

# ---- run stage ---------------------------------------------------------------------------------
FROM ${BASE_IMAGE}

# bubblewrap: the code sandbox; Debian's /usr/bin/python3: the interpreter run inside it;
# tini: PID 1, reaps orphaned sandbox processes and forwards signals. The local base image has
# all three; a public python image gets them from apt.
RUN if ! command -v bwrap >/dev/null || ! command -v tini >/dev/null || ! [ -x /usr/bin/python3 ]; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap tini python3 \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && useradd --uid 10001 --user-group --create-home --home-dir /home/olmorl olmorl

COPY --from=build /opt/olmorl /opt/olmorl
COPY --from=wheel /dist /dist

# The base image's pip installs the package into the venv (which has no pip of its own).
RUN python3 -m pip --python /opt/olmorl/bin/python install --no-deps --no-index --no-cache-dir \
        --disable-pip-version-check /dist/*.whl \
    && rm -rf /dist \
    && /opt/olmorl/bin/olmorl-rewards --version

ENV VIRTUAL_ENV=/opt/olmorl \
    PATH=/opt/olmorl/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    OLMORL_HOST=0.0.0.0 \
    OLMORL_PORT=8000 \
    OLMORL_IMAGE_VARIANT=lean

USER olmorl
WORKDIR /home/olmorl
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('OLMORL_PORT', '8000'), timeout=4)"

ENTRYPOINT ["tini", "--", "olmorl-rewards", "serve"]
