/**
 * Copy buttons of the researcher pages: a `<button data-copy="ID">` copies the text of the element
 * with that id (an invite link, the open link) to the clipboard, and says so on the button. Where the
 * clipboard API is refused (a page not served over HTTPS), the text is selected so it can be copied
 * by hand.
 */

export async function copyText(
  text: string,
  clipboard: Pick<Clipboard, "writeText"> | undefined,
): Promise<boolean> {
  if (!clipboard) return false;
  try {
    await clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

function selectContents(doc: Document, node: Node): void {
  const range = doc.createRange();
  range.selectNodeContents(node);
  const selection = doc.getSelection();
  selection?.removeAllRanges();
  selection?.addRange(range);
}

export function wireCopyButtons(doc: Document): void {
  for (const button of doc.querySelectorAll<HTMLButtonElement>("button[data-copy]")) {
    button.addEventListener("click", async () => {
      const source = doc.getElementById(button.dataset.copy ?? "");
      if (!source) return;
      const text = (source.textContent ?? "").trim();
      const copied = await copyText(text, doc.defaultView?.navigator.clipboard);
      if (!copied) selectContents(doc, source);
      button.textContent = copied ? "Copied" : "Selected: press Ctrl+C";
      button.dataset.copied = copied ? "yes" : "selected";
    });
  }
}

if (typeof document !== "undefined") {
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => wireCopyButtons(document));
  } else {
    wireCopyButtons(document);
  }
}
