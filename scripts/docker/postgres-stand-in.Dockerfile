# Stand-in for the official `postgres` image, for machines that cannot reach an
# image registry: Debian bookworm's PostgreSQL 15 package, with an entrypoint
# that honours the same contract deploy/compose.yaml relies on (POSTGRES_USER,
# POSTGRES_PASSWORD, POSTGRES_DB, data in /var/lib/postgresql/data, arguments
# after `postgres` passed to the server, `pg_isready` for the health check).
# scripts/docker-test.sh builds it as duel-postgres:15-bookworm.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data \
 && install -d -o postgres -g postgres -m 2775 /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
USER postgres
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
# PostgreSQL's "fast" shutdown, as the official image.
STOPSIGNAL SIGINT
LABEL org.duel.stand-in="PostgreSQL 15 from Debian bookworm"
