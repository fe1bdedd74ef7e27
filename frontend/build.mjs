// Bundle the TypeScript and CSS sources into dist/hatlab/ (served by Django as static "hatlab/<file>").
// `node build.mjs --dev` keeps the output readable and adds source maps.
import { build } from "esbuild";
import { readdirSync, rmSync, statSync } from "node:fs";

/**
 * Page scripts run as classic scripts (no module loader needed inside crowd platforms' frames). Every
 * file in src/kinds/ is the page script of one task kind (or family), found here without a list, and
 * built to kinds/<name>.js (the kind's `page_script`); the other pages are named below.
 */
const KIND_PAGES = readdirSync("src/kinds")
  .filter((file) => file.endsWith(".ts"))
  .map((file) => `kinds/${file.slice(0, -3)}`)
  .sort();
const PAGE_SCRIPTS = [...KIND_PAGES, "progress", "dashboard", "copy"];
/** Every stylesheet in src/kinds/ is one kind's CSS (its pages load it), built to kinds/<name>.css. */
const KIND_STYLES = readdirSync("src/kinds")
  .filter((file) => file.endsWith(".css"))
  .map((file) => `kinds/${file.slice(0, -4)}`)
  .sort();
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
  build({ ...common, entryPoints: entries([...STYLES, ...KIND_STYLES], "css") }),
]);

for (const file of readdirSync(outdir, { recursive: true }).sort()) {
  if (!statSync(`${outdir}/${file}`).isFile()) continue;
  const kib = (statSync(`${outdir}/${file}`).size / 1024).toFixed(1);
  console.log(`${outdir}/${file}  ${kib} KiB`);
}
