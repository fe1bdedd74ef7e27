# One image for web, worker and gpu-worker. The frontend is built in a Node stage and served as static files.
FROM node:20-bookworm-slim AS frontend
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
RUN npm run build

FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=config.settings \
    HATLAB_STATIC_ROOT=/app/staticfiles HATLAB_MEDIA_ROOT=/data/media
WORKDIR /app
# The app's dependencies from the hashed lock, then torch (outside the lock, see .ci/lock): PyPI's build of
# torch==2.13.0, with its CUDA libraries, for the GPU worker.
COPY requirements/runtime.lock requirements/runtime.lock
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements/runtime.lock \
 && pip install --no-cache-dir torch==2.13.0
COPY pyproject.toml README.md ./
COPY config/ config/
COPY annotate/ annotate/
COPY explain_engine/ explain_engine/
RUN pip install --no-cache-dir --no-deps .
COPY manage.py ./
COPY --from=frontend /src/frontend/dist frontend/dist
RUN DJANGO_SECRET_KEY=collectstatic python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--workers", "3", "--threads", "4", "--keep-alive", "75"]
