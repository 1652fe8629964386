# The image that docker-compose.yml runs as "web" (gunicorn) and "worker" (celery).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    VAR_DIR=/app/var \
    STATIC_ROOT=/app/staticfiles

WORKDIR /app
# Recorded in every audit's manifest (the image has no .git): docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD)
ARG GIT_COMMIT=unknown
ENV GIT_COMMIT=$GIT_COMMIT
COPY requirements.txt requirements-nodeps.txt ./
RUN pip install -r requirements.txt && pip install --no-deps -r requirements-nodeps.txt

COPY . .
# Static files are collected into the image and served by WhiteNoise from gunicorn.
RUN SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput -v0 \
    && useradd --system --uid 1000 --home /app auditapp \
    && mkdir -p /app/var && chown -R auditapp /app/var
USER auditapp

EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "600"]
