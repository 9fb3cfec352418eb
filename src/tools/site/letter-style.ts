/** Appended to the example site's style.css. */
export const LETTER_CSS = `
/* Static site: the letter's own HTML, inline in the issue page. */
.letter { background: var(--card); border: 1px solid var(--line); border-radius: var(--radius); padding: 1.5rem; font: 1.0625rem/1.65 Georgia, "Iowan Old Style", serif; overflow-wrap: anywhere; }
.letter h1, .letter h2, .letter h3 { font-family: system-ui, sans-serif; line-height: 1.25; }
.letter img { max-width: 100%; height: auto; }
.letter blockquote { margin: 1.25rem 0; padding: .25rem 1rem; border-left: 4px solid #7aa36a; color: #3d4d3d; font-style: italic; }
.letter table { border-collapse: collapse; max-width: 100%; }
.letter > :first-child { margin-top: 0; }
.letter > :last-child { margin-bottom: 0; }
`;
