// copyText puts text on the clipboard: the Clipboard API where the page may
// use it, else a selected textarea and execCommand (WebKitGTK's window and
// pages not served from a secure context refuse the API).
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text)
  } catch {
    const t = document.createElement('textarea')
    t.value = text
    document.body.append(t)
    t.select()
    document.execCommand('copy')
    t.remove()
  }
}
