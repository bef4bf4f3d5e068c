// Moved to bench/scenarios/vendor-page.mjs (the scenario and its data, requests and floor); this
// path stays for the bench files that import it.
export * from "./scenarios/vendor-page.mjs";
