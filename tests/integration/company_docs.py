"""A small company's documents, one passage each, for the tests that run the bundled model:
the questions about them are paraphrases that share few or no words with the passage."""

COMPANY_DOCS = {
    "it/accounts.md": "# Accounts\n\n## Password reset\n\nIf you forgot your password, open the "
    "sign-in page, choose 'Forgot password' and follow the link we e-mail you. The link "
    "expires after one hour.\n",
    "hr/leave.md": "# Leave\n\n## Vacation\n\nStaff earn twenty-five days of paid annual "
    "leave. Requests go to your manager two weeks ahead.\n",
    "finance/expenses.md": "# Expenses\n\n## Reimbursement\n\nSubmit receipts within thirty "
    "days; the finance team pays approved claims with the next salary.\n",
    "ops/outage.md": "# Incidents\n\n## Database outage\n\nWhen the primary database stops "
    "answering, fail over to the replica and page the on-call engineer.\n",
    "facilities/parking.md": "# Facilities\n\n## Parking\n\nVisitors park in the north lot; "
    "employees need a permit from reception.\n",
}
