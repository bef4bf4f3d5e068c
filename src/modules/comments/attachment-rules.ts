// Executable content is refused by name, by declared type and by its first bytes: a client can
// rename a file or lie about its type, but not about its content.
const executableExtensions = new Set(
  "exe bat cmd com scr msi js mjs cjs vbs vbe wsf wsh ps1 psm1 sh bash zsh csh ksh dll sys drv app deb rpm jar pif lnk cpl hta reg apk dmg pkg elf bin so dylib".split(
    " ",
  ),
);

const executableTypes = new Set([
  "application/x-msdownload",
  "application/x-msdos-program",
  "application/x-dosexec",
  "application/x-executable",
  "application/x-elf",
  "application/x-mach-binary",
  "application/x-sharedlib",
  "application/x-sh",
  "application/x-csh",
  "application/x-bat",
  "application/x-msi",
  "application/vnd.microsoft.portable-executable",
  "application/java-archive",
  "application/x-java-archive",
  "application/vnd.android.package-archive",
  "application/x-httpd-php",
  "application/x-javascript",
  "application/javascript",
  "application/ecmascript",
  "text/javascript",
  "text/ecmascript",
  "text/x-sh",
  "text/x-shellscript",
  "text/x-python",
  "text/x-perl",
  "text/x-ruby",
  "application/hta",
]);

const executableSignatures: { bytes: number[]; what: string }[] = [
  { bytes: [0x4d, 0x5a], what: "a Windows executable" },
  { bytes: [0x7f, 0x45, 0x4c, 0x46], what: "an ELF executable" },
  { bytes: [0xcf, 0xfa, 0xed, 0xfe], what: "a Mach-O executable" },
  { bytes: [0xce, 0xfa, 0xed, 0xfe], what: "a Mach-O executable" },
  { bytes: [0xfe, 0xed, 0xfa, 0xcf], what: "a Mach-O executable" },
  { bytes: [0xfe, 0xed, 0xfa, 0xce], what: "a Mach-O executable" },
  { bytes: [0xca, 0xfe, 0xba, 0xbe], what: "a Mach-O or Java class file" },
  { bytes: [0x23, 0x21], what: "a script (#!)" },
];

/** Why the file is refused, or null when it is acceptable. */
export function executableReason(fileName: string, fileType: string, bytes: Uint8Array): string | null {
  const extensions = fileName.toLowerCase().split(".").slice(1);
  const bad = extensions.find((ext) => executableExtensions.has(ext.trim()));
  if (bad) return `files with the extension .${bad} are not accepted`;
  if (executableTypes.has(fileType.toLowerCase())) return `files of type ${fileType} are not accepted`;
  const signature = executableSignatures.find((s) => s.bytes.every((b, i) => bytes[i] === b));
  if (signature) return `the content is ${signature.what}, which is not accepted`;
  return null;
}

/**
 * A file name safe to show and to send in Content-Disposition: no paths, controls or quotes, no
 * surrounding whitespace, not "." or "..". A pattern, so that the OpenAPI document carries it too.
 */
export const safeFileNamePattern = '^(?!\\.{1,2}$)(?!\\s)(?![\\s\\S]*\\s$)[^/\\\\\\u0000-\\u001f\\u007f"]+$';
const safeFileName = new RegExp(safeFileNamePattern);

export function isSafeFileName(name: string): boolean {
  return safeFileName.test(name);
}
