// An evidence store accepts what evidence is made of, and nothing else: the file's extension and
// its declared type must both be on these lists (an allow-list, because a deny-list of executable
// formats is never complete). Active content that a browser or an OS would run is not on them:
// HTML, SVG, macro-enabled Office files, scripts, installers, disk images, shortcuts.
const evidenceExtensions = new Set(
  [
    "pdf txt md csv tsv json xml yaml yml log rtf",
    "doc docx odt xls xlsx ods ppt pptx odp",
    "png jpg jpeg gif webp tif tiff bmp heic heif",
    "zip 7z tar gz tgz",
    "eml msg pem crt cer der mp4 mov webm",
  ]
    .join(" ")
    .split(" "),
);

const evidenceTypes = new Set([
  "application/pdf",
  "text/plain",
  "text/markdown",
  "text/csv",
  "text/tab-separated-values",
  "application/json",
  "application/xml",
  "text/xml",
  "application/yaml",
  "text/yaml",
  "application/rtf",
  "text/rtf",
  "application/msword",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "application/vnd.oasis.opendocument.text",
  "application/vnd.ms-excel",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.oasis.opendocument.spreadsheet",
  "application/vnd.ms-powerpoint",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  "application/vnd.oasis.opendocument.presentation",
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/tiff",
  "image/bmp",
  "image/heic",
  "image/heif",
  "application/zip",
  "application/x-zip-compressed",
  "application/x-7z-compressed",
  "application/x-tar",
  "application/gzip",
  "application/x-gzip",
  "message/rfc822",
  "application/vnd.ms-outlook",
  "application/x-pem-file",
  "application/x-x509-ca-cert",
  "application/pkix-cert",
  "video/mp4",
  "video/quicktime",
  "video/webm",
  // What clients send when they do not know: the extension and the content decide then.
  "application/octet-stream",
]);

// Executable content is also refused by every part of the name and by its first bytes: a client
// can rename a file or lie about its type, but not about its content.
const executableExtensions = new Set(
  "exe bat cmd com scr msi msix appx js jse mjs cjs vbs vbe wsf wsh wsc ps1 ps1xml psm1 psd1 sh bash zsh csh ksh command py pyw pl rb php dll sys drv app deb rpm jar pif lnk url scf chm iso img vhd cpl hta reg inf apk dmg pkg elf bin so dylib".split(
    " ",
  ),
);

const executableTypes = new Set([
  "application/x-msdownload",
  "application/x-ms-dos-executable",
  "application/x-shellscript",
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
  const type = fileType.split(";")[0]?.trim().toLowerCase() ?? "";
  if (executableTypes.has(type)) return `files of type ${fileType} are not accepted`;
  const last = extensions.at(-1)?.trim();
  if (!last || !evidenceExtensions.has(last)) {
    return `only evidence files are accepted (documents, spreadsheets, images, archives, text, CSV, JSON, PDF...); ${last ? `.${last}` : "a name without an extension"} is not one`;
  }
  if (!evidenceTypes.has(type)) return `files of type ${fileType} are not accepted: only evidence file types are`;
  const signature = executableSignatures.find((s) => s.bytes.every((b, i) => bytes[i] === b));
  if (signature) return `the content is ${signature.what}, which is not accepted`;
  return null;
}

/**
 * A file name safe to show and to send in Content-Disposition: no paths, quotes or control
 * characters (C0, DEL, C1), no bidirectional marks, embeddings, overrides or isolates (U+200E/F,
 * U+202A-202E, U+2066-2069: with U+202E, "report" + U+202E + "fdp.exe" shows as "reportexe.pdf"), no
 * surrounding whitespace, not "." or "..". A pattern, so that the OpenAPI document carries it too.
 */
export const safeFileNamePattern =
  '^(?!\\.{1,2}$)(?!\\s)(?![\\s\\S]*\\s$)[^/\\\\\\u0000-\\u001f\\u007f-\\u009f\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069"]+$';
const safeFileName = new RegExp(safeFileNamePattern);

export function isSafeFileName(name: string): boolean {
  return safeFileName.test(name);
}
