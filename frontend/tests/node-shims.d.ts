/** The two Node built-ins the tests' fake API uses to log what it serves (the project has no @types/node). */
declare module "node:fs" {
  export function appendFileSync(path: string, data: string): void;
}
declare const process: { env: Record<string, string | undefined> };
