// The generated layer: `Client`, `Components` and `Operations` come from openapi.yaml (a link
// to the repository's contract) through swift-openapi-generator's build plugin, at build time,
// as openapi-generator-config.yaml says. Nothing generated is committed; this file only gives
// the target a source of its own, which SwiftPM requires.
