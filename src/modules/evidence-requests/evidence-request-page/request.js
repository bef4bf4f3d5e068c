// The evidence request page's only script (served from the service's own origin; the CSP allows
// nothing else). The link's token is read from this page's path and sent as
// X-Evidence-Request-Token, the one credential the page's three calls take.

(() => {
  const form = document.getElementById("submission");
  if (!form) return;
  const token = decodeURIComponent(location.pathname.slice(location.pathname.lastIndexOf("/") + 1));
  const filesInput = document.getElementById("files");
  const noteInput = document.getElementById("note");
  const button = document.getElementById("submit");
  const status = document.getElementById("status");
  const maxFiles = Number(form.dataset.maxFiles);
  const maxBytes = Number(form.dataset.maxBytes);

  const say = (text, kind) => {
    status.textContent = text;
    status.className = kind ?? "";
  };

  /**
   * fetch, with a failed connection said in the page's words: the browser's own ("Failed to fetch"
   * in Chromium, "NetworkError when attempting to fetch resource." in Firefox) tells a recipient nothing.
   */
  async function send(url, init, failure) {
    try {
      return await fetch(url, init);
    } catch {
      throw new Error(failure);
    }
  }

  async function call(path, body) {
    const init = {
      method: body ? "POST" : "GET",
      headers: { "x-evidence-request-token": token, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      credentials: "omit",
      cache: "no-store",
      referrerPolicy: "no-referrer",
    };
    const response = await send(path, init, "the service could not be reached");
    const answer = await response.json().catch(() => null);
    if (!response.ok) throw new Error(answer?.message ?? `The service answered ${response.status}`);
    return answer;
  }

  /** SHA-256 of the file's bytes in standard base64, as the upload URL admits them. */
  async function digest(file) {
    const bytes = new Uint8Array(await crypto.subtle.digest("SHA-256", await file.arrayBuffer()));
    let text = "";
    for (const byte of bytes) text += String.fromCharCode(byte);
    return btoa(text);
  }

  async function upload(file) {
    const ticket = await call("/v1/attachment-uploads", {
      fileName: file.name,
      fileType: file.type || "application/octet-stream",
      size: file.size,
      sha256: await digest(file),
    });
    const init = {
      method: ticket.method,
      headers: ticket.headers,
      body: file,
      credentials: "omit",
      referrerPolicy: "no-referrer",
    };
    const sent = await send(ticket.uploadUrl, init, `${file.name} could not be sent: the connection to the store failed`);
    if (!sent.ok) throw new Error(`The store refused ${file.name} (${sent.status})`);
    return ticket.id;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    // Still sending: the button says so (aria-disabled) but keeps the focus, and a second press waits.
    if (button.getAttribute("aria-disabled") === "true") return;
    const files = [...filesInput.files];
    if (files.length === 0) {
      say("Choose at least one file.", "error");
      filesInput.focus();
      return;
    }
    if (files.length > maxFiles) {
      say(`Choose at most ${maxFiles} files.`, "error");
      filesInput.focus();
      return;
    }
    const tooLarge = files.find((file) => file.size > maxBytes || file.size === 0);
    if (tooLarge) {
      say(`${tooLarge.name} is empty or larger than ${Math.floor(maxBytes / 1048576)} MB.`, "error");
      filesInput.focus();
      return;
    }
    // aria-disabled, not disabled: a disabled button loses the keyboard's focus (to the page's body,
    // in Chromium and Firefox alike), and after a failure Enter would then not try again.
    button.setAttribute("aria-disabled", "true");
    form.setAttribute("aria-busy", "true");
    try {
      const uploadIds = [];
      for (const [index, file] of files.entries()) {
        say(`Sending ${file.name} (${index + 1} of ${files.length})…`);
        uploadIds.push(await upload(file));
      }
      say("Submitting…");
      await call("/v1/evidence-requests/current/submission", { uploadIds, note: noteInput.value.trim() || null });
      const done = document.createElement("section");
      done.id = "done";
      done.setAttribute("role", "status");
      done.tabIndex = -1;
      const heading = document.createElement("h2");
      heading.textContent = "Thank you: your files were sent";
      const text = document.createElement("p");
      text.textContent = "They now await review. You will get an e-mail if anything else is needed.";
      done.append(heading, text);
      form.replaceWith(done);
      done.focus();
    } catch (error) {
      // One full stop: a message of the service's may end with its own.
      say(`Nothing was submitted: ${error.message.replace(/\.+$/, "")}. You can try again.`, "error");
      button.removeAttribute("aria-disabled");
    } finally {
      form.removeAttribute("aria-busy");
    }
  });
})();
