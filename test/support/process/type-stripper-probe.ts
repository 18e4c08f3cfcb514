// A preload (`node --import <TYPE_STRIPPER_PROBE> ...`) that says on stderr, as the process exits,
// whether Node loaded its type stripper: `type stripper loaded: true|false`. With a warm compile
// cache it never does (the stripped modules are read back), and that is ~20 MiB of RSS.

/** A data: URL, so that the probe itself is plain JavaScript and needs no stripping. */
export const TYPE_STRIPPER_PROBE =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal of the probe's JavaScript
  'data:text/javascript,process.on("exit",()=>process.stderr.write(`type stripper loaded: ${process.moduleLoadList.some((name)=>name.includes("internal/deps/amaro/"))}\\n`))';
