# olmorl reward server.
#
#   docker build -t olmorl-rewards .
#   docker run -p 8000:8000 olmorl-rewards
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

# Dependencies first, keyed on pyproject.toml (and the wheelhouse) alone, so code changes reuse
# this layer. docker/wheels/ is empty in a clean checkout: pip then installs from PyPI. Where the
# build cannot reach PyPI, scripts/build-image.sh fills it on the host and pip stays offline.
COPY pyproject.toml /src/pyproject.toml
COPY docker/wheels/ /wheels/
RUN python3 -m venv "$VIRTUAL_ENV" \
    && python3 -c 'import tomllib; p = tomllib.load(open("/src/pyproject.toml", "rb"))["project"]; \
print("\n".join(r for r in p["dependencies"] + p["optional-dependencies"]["server"] if not r.startswith("olmorl")))' \
        >/tmp/requirements.txt \
    && if ls /wheels/*.whl >/dev/null 2>&1; then set -- --no-index --find-links /wheels; fi \
    && pip install "$@" "setuptools>=69" wheel \
    && pip install "$@" -r /tmp/requirements.txt

# The package itself, as a wheel: no dependency resolution, no network. Installing it in the run
# stage keeps a code change from re-copying the whole environment into a new layer.
COPY pyproject.toml README.md* /src/
COPY olmorl /src/olmorl
RUN pip wheel --no-deps --no-build-isolation --wheel-dir /dist /src

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
COPY --from=build /dist /dist

ENV VIRTUAL_ENV=/opt/olmorl \
    PATH=/opt/olmorl/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    OLMORL_HOST=0.0.0.0 \
    OLMORL_PORT=8000

RUN pip install --no-deps --no-index --no-cache-dir --disable-pip-version-check /dist/*.whl \
    && rm -rf /dist \
    && olmorl-rewards --help >/dev/null

USER olmorl
WORKDIR /home/olmorl
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('OLMORL_PORT', '8000'), timeout=4)"

ENTRYPOINT ["tini", "--", "olmorl-rewards", "serve"]
