// The media type an upload is declared with. The accepted types come from the API (GET /v1/meta), never a
// copy of them here: browsers leave File.type empty for many formats, and the extension decides then.

/** The media type to declare for `file` ({name, type}), given the API's accepted types
 * ([{mediaType, extensions}], extensions with their dot). The API checks the bytes either way. */
export function mediaTypeOf(file, acceptedTypes = []) {
  if (file.type) return file.type;
  const extension = file.name.includes(".") ? `.${file.name.split(".").pop().toLowerCase()}` : "";
  const accepted = acceptedTypes.find((candidate) => candidate.extensions.includes(extension));
  return accepted ? accepted.mediaType : "application/octet-stream";
}
