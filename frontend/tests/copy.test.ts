import { describe, expect, it } from "vitest";

import { copyText, wireCopyButtons } from "../src/copy";
import { settle } from "./helpers";

function page(): void {
  document.body.innerHTML =
    '<code id="link-1">https://example.org/w/1/?invite=abc</code>' +
    '<button type="button" data-copy="link-1">Copy</button>';
}

describe("copy buttons", () => {
  it("copy the text of the element they name", async () => {
    page();
    const written: string[] = [];
    Object.defineProperty(navigator, "clipboard", {
      value: { writeText: async (text: string) => void written.push(text) },
      configurable: true,
    });
    wireCopyButtons(document);
    const button = document.querySelector("button") as HTMLButtonElement;
    button.click();
    await settle();
    expect(written).toEqual(["https://example.org/w/1/?invite=abc"]);
    expect(button.textContent).toBe("Copied");
  });

  it("select the text when the clipboard refuses", async () => {
    page();
    Object.defineProperty(navigator, "clipboard", {
      value: { writeText: async () => Promise.reject(new Error("denied")) },
      configurable: true,
    });
    wireCopyButtons(document);
    const button = document.querySelector("button") as HTMLButtonElement;
    button.click();
    await settle();
    expect(button.dataset.copied).toBe("selected");
    expect(document.getSelection()?.toString()).toBe("https://example.org/w/1/?invite=abc");
    expect(await copyText("x", undefined)).toBe(false);
  });
});
