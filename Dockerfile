# One image runs every role (ROLES selects them). Not exercised by CI (no Docker engine there).
FROM node:20-bookworm-slim AS deps
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production DATA_DIR=/data
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
COPY projections ./projections
COPY workers ./workers
VOLUME /data
EXPOSE 14702 14704
CMD ["node", "--import", "tsx", "src/main.ts"]
