/** One labelled input of the sign-in and setup forms, with its error. */
export function AuthField({ id, label, type, autoComplete, value, onChange, error }: {
  id: string;
  label: string;
  type: "email" | "password";
  autoComplete: string;
  value: string;
  onChange: (value: string) => void;
  error?: string;
}) {
  return (
    <div className="auth-field">
      <label htmlFor={id}>{label}</label>
      <input id={id} type={type} autoComplete={autoComplete} required value={value}
        aria-invalid={error ? true : undefined} aria-describedby={error ? `${id}-err` : undefined}
        onChange={(e) => onChange(e.target.value)} />
      {error && <p id={`${id}-err`} className="field-error">{error}</p>}
    </div>
  );
}
