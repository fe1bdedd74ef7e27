// Bundle the TypeScript and CSS sources into dist/hatlab/ (served by Django as static "hatlab/<file>").
// `node build.mjs --dev` keeps the output readable and adds source maps.
import { build } from "esbuild";
import { readdirSync, rmSync, statSync } from "node:fs";

/** Page scripts: each runs as a classic script (no module loader needed inside crowd platforms' frames). */
const PAGE_SCRIPTS = [
  "task_highlight",
  "task_choice",
  "task_rating",
  "task_marking",
  "progress",
  "dashboard",
];
/** ES modules that templates import from (`import { renderBarChart } from ".../charts.js"`). */
const MODULES = ["charts"];
/** Stylesheets of the pages (each imports tokens.css); dashboard.css comes with dashboard.ts. */
const STYLES = ["site", "machine", "hatlab"];

const dev = process.argv.includes("--dev");
const outdir = "dist/hatlab";
const common = {
  bundle: true,
  minify: !dev,
  sourcemap: dev ? "linked" : false,
  target: ["es2020"],
  logLevel: "warning",
  legalComments: "eof",
  outdir,
};
const entries = (names, ext) => Object.fromEntries(names.map((name) => [name, `src/${name}.${ext}`]));

rmSync(outdir, { recursive: true, force: true });
await Promise.all([
  build({ ...common, entryPoints: entries(PAGE_SCRIPTS, "ts"), format: "iife" }),
  build({ ...common, entryPoints: entries(MODULES, "ts"), format: "esm" }),
  build({ ...common, entryPoints: entries(STYLES, "css") }),
]);

for (const file of readdirSync(outdir).sort()) {
  const kib = (statSync(`${outdir}/${file}`).size / 1024).toFixed(1);
  console.log(`${outdir}/${file}  ${kib} KiB`);
}
