# The server image for compose.yaml.
FROM swift:6.1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libpq-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources Sources
# Every target Package.swift names must exist to resolve it, benchmarks and tests included.
COPY Benchmarks Benchmarks
COPY Tests Tests
RUN swift build -c release --product diary-server --static-swift-stdlib

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libpq5 ca-certificates tzdata && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 diary
WORKDIR /app
# /app stays root's; the server writes only in its data folder (development keys, photos),
# which compose mounts as a volume (a new volume takes this folder's owner).
RUN mkdir -p /app/data && chown diary /app/data
COPY --from=build /src/.build/release/diary-server /usr/local/bin/diary-server
COPY sql sql
COPY openapi.yaml openapi.yaml
USER diary
ENV HOST=0.0.0.0 PORT=8080 DIARY_MIGRATIONS_DIR=/app/sql/migrations DIARY_OPENAPI_FILE=/app/openapi.yaml DIARY_DATA_DIR=/app/data
EXPOSE 8080
CMD ["sh", "-c", "diary-server migrate && exec diary-server serve"]
