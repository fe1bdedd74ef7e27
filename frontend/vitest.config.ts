import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    environment: "jsdom",
    include: ["tests/**/*.test.ts"],
    pool: "threads",
    poolOptions: { threads: { maxThreads: 1, minThreads: 1 } },
  },
});
